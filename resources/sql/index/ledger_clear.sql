DELETE FROM `{database}`.`catbench_ledger` WHERE `tbl` = %s
