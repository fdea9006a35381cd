#!/usr/bin/env bash
# System tools catbench drives, the ones named as arguments (`all`: every one):
#   server   a MariaDB/MySQL server binary       rocksdb  its MyRocks plugin
#   fio      fio                                  cluster  Galera, mariadb-backup, rsync, socat
#   slurm    Slurm and munge (the test that runs the workflow through a real Slurm)
#   browser  chromium (the test that opens the report in a real browser)
# A config's tools: `python -m catbench system-tools --config CONFIG` (what `make run` passes).
# Installs the missing ones with apt-get when we are root on Debian/Ubuntu; otherwise
# prints the exact command (or the conda env) and fails, so nothing half-works later.
# CATBENCH_DRY_RUN=1: print the missing packages instead of installing them.
set -euo pipefail

all="server rocksdb fio cluster slurm browser"
[ $# -gt 0 ] || { echo "usage: $0 TOOL... | all (tools: $all)" >&2; exit 2; }
[ "$*" = all ] && set -- $all
for tool in "$@"; do
  [[ " $all " == *" $tool "* ]] || { echo "install-system: unknown tool '$tool' (tools: $all, or all)" >&2; exit 2; }
done
want=" $* "
wants() { [[ "$want" == *" $1 "* ]]; }

missing=()
if wants server; then
  command -v mariadbd >/dev/null || command -v mysqld >/dev/null \
    || [ -x /usr/sbin/mariadbd ] || [ -x /usr/sbin/mysqld ] || missing+=(mariadb-server)
  command -v mariadb-install-db >/dev/null || command -v mysql_install_db >/dev/null \
    || [ -x /usr/bin/mariadb-install-db ] || missing+=(mariadb-server)
fi
# The index study's second storage engine (load.engines: rocksdb): MyRocks for the same MariaDB.
if wants rocksdb; then
  rocksdb=no
  for so in /usr/lib/mysql/plugin/ha_rocksdb.so /usr/lib64/mysql/plugin/ha_rocksdb.so \
            /usr/lib/mariadb/plugin/ha_rocksdb.so /usr/lib64/mariadb/plugin/ha_rocksdb.so; do
    [ -e "$so" ] && rocksdb=yes
  done
  [ "$rocksdb" = yes ] || missing+=(mariadb-plugin-rocksdb)
fi
if wants fio; then
  command -v fio >/dev/null || missing+=(fio)
fi
# The cluster stage: Galera, and the tools of both SST methods (mariabackup streams with socat).
if wants cluster; then
  galera=no
  for so in /usr/lib/galera/libgalera_smm.so /usr/lib/galera-4/libgalera_smm.so /usr/lib64/galera-4/libgalera_smm.so; do
    [ -e "$so" ] && galera=yes
  done
  [ "$galera" = yes ] || missing+=(galera-4)
  command -v mariadb-backup >/dev/null || command -v mariabackup >/dev/null || missing+=(mariadb-backup)
  command -v rsync >/dev/null || missing+=(rsync)
  command -v socat >/dev/null || missing+=(socat)
fi
if wants slurm; then
  for tool in slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || missing+=(slurm-wlm)
  done
  command -v munged >/dev/null || [ -x /usr/sbin/munged ] || missing+=(munge)
fi
# A headless browser for the test that opens the HTML report as a person would.
if wants browser; then
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || missing+=(chromium)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
[ -z "${CATBENCH_DRY_RUN:-}" ] || { echo "$pkgs"; exit 0; }
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
