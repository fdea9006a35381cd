-- crash-under-queries HV mini-suite: the table's row count (a full scan).
SELECT COUNT(*) FROM `{database}`.`{table}`
