SELECT `seq`, `path`, `rows`, `bytes`, `checksum`, `start`, `end` FROM `{database}`.`catbench_ledger`
WHERE `tbl` = %s AND `rep` = %s ORDER BY `end`
