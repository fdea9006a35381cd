-- The Objects in a drawn box (query/sizing.py): one filtered scan (DuckDB).
SELECT COUNT(*) FROM Object WHERE ra_PS BETWEEN $ra_min AND $ra_max AND decl_PS BETWEEN $dec_min AND $dec_max
