-- bulk: the session settings of a bulk load (then one transaction, or one per
-- load.transaction_rows rows).
SET SESSION unique_checks=0, foreign_key_checks=0, sql_log_bin=0
