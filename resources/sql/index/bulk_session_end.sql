-- bulk: the session's checks back on after the load.
SET SESSION unique_checks=1, foreign_key_checks=1
