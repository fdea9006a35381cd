#!/usr/bin/env bash
# System tools catbench drives: a MariaDB/MySQL server binary (and its MyRocks plugin) and
# fio; Slurm and munge for the test that runs the workflow through a real single-node
# Slurm; chromium for the test that opens the report in a real browser.
# Installs the missing ones with apt-get when we are root on Debian/Ubuntu; otherwise
# prints the exact command (or the conda env) and fails, so nothing half-works later.
set -euo pipefail

missing=()
command -v mariadbd >/dev/null || command -v mysqld >/dev/null \
  || [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ] || missing+=(mariadb-server)
command -v mariadb-install-db >/dev/null || command -v mysql_install_db >/dev/null \
  || [ -x /usr/bin/mariadb-install-db ] || missing+=(mariadb-server)
command -v fio >/dev/null || missing+=(fio)
# The cluster stage: Galera, and the tools of both SST methods (mariabackup streams with socat).
galera=no
for so in /usr/lib/galera/libgalera_smm.so /usr/lib/galera-4/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so; do
  [ -e "$so" ] && galera=yes
done
[ "$galera" = yes ] || missing+=(galera-4)
# The index study's second storage engine (load.engines: rocksdb): MyRocks for the same MariaDB.
rocksdb=no
for so in /usr/lib/mysql/plugin/ha_rocksdb.so /usr/lib64/mysql/plugin/ha_rocksdb.so \
          /usr/lib/mariadb/plugin/ha_rocksdb.so /usr/lib64/mariadb/plugin/ha_rocksdb.so; do
  [ -e "$so" ] && rocksdb=yes
done
[ "$rocksdb" = yes ] || missing+=(mariadb-plugin-rocksdb)
command -v mariadb-backup >/dev/null || command -v mariabackup >/dev/null || missing+=(mariadb-backup)
command -v rsync >/dev/null || missing+=(rsync)
command -v socat >/dev/null || missing+=(socat)
for tool in slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=(slurm-wlm)
done
command -v munged >/dev/null || [ -x /usr/sbin/munged ] || missing+=(munge)
# A headless browser for the test that opens the HTML report as a person would.
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  echo "install-system: installing $pkgs with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $pkgs
  exit 0
fi
cat >&2 <<MSG
catbench needs these system packages: $pkgs
Install them, then run make again:
  sudo apt-get install -y $pkgs
or, without root, use the conda environments in envs/:
  conda env create -f envs/server.yaml && conda env create -f envs/fio.yaml
MSG
exit 1
