-- The resumable loads' ledger: one row per input file committed into the index table, in
-- the same transaction as the file's rows (see load/ledger.py). `seq` is the file's place
-- in the load order; path, rows, bytes and checksum let a re-run check its input is unchanged.
CREATE TABLE IF NOT EXISTS `{database}`.`catbench_ledger` (
  `tbl` VARCHAR(64) NOT NULL, `rep` INT NOT NULL, `seq` INT NOT NULL,
  `path` VARCHAR(1024) NOT NULL, `rows` BIGINT NOT NULL, `bytes` BIGINT NOT NULL,
  `checksum` DECIMAL(40, 0) NOT NULL, `start` DOUBLE NOT NULL, `end` DOUBLE NOT NULL,
  PRIMARY KEY (`tbl`, `rep`, `seq`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4
