-- SHV1's pairs estimated from a sample (query/sizing.py): the neighbours within $radius of
-- $sample of the box's Objects, chosen by a hash of their ids with $salt; a bounded join (DuckDB).
WITH b AS (SELECT objectId, ra_PS, decl_PS FROM Object
           WHERE ra_PS BETWEEN $ra_min AND $ra_max AND decl_PS BETWEEN $dec_min AND $dec_max),
     s AS (SELECT * FROM b ORDER BY hash(objectId, $salt), objectId LIMIT $sample)
SELECT (SELECT COUNT(*) FROM s), COUNT(b.objectId)
FROM s JOIN b ON b.decl_PS BETWEEN s.decl_PS - $radius AND s.decl_PS + $radius
 AND b.objectId <> s.objectId
WHERE angSep(s.ra_PS, s.decl_PS, b.ra_PS, b.decl_PS) < $radius
