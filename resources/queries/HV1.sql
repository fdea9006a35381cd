-- HV1: count of all Objects (DMTR-21 3.3.4).
-- place: 4
-- params:
-- dispatch: all
-- order: n
-- @query
SELECT COUNT(*) AS n FROM Object
-- @chunk
SELECT COUNT(*) AS n FROM {Object}
-- @merge
SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS n FROM partials
