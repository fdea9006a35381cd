INSERT INTO `{database}`.`catbench_ledger` (`tbl`, `rep`, `seq`, `path`, `rows`, `bytes`, `checksum`, `start`, `end`)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
