-- SHV1: near-neighbour pair count in a box (DMTR-21 3.3.7): unordered pairs of Objects,
-- both in the box, closer than radius_deg (<= the partition overlap).
-- Per chunk (Qserv's sub-chunk plan), for the sub-chunks S of the chunk that meet the box:
-- pairs inside S, plus pairs (o1 in S, o2 in the overlap of S). A pair split over two
-- sub-chunks appears from both sides; o1.objectId < o2.objectId keeps exactly one.
-- place: 7
-- params: ra_min, ra_max, dec_min, dec_max, radius_deg
-- defaults: box_deg=2.0
-- draw: box, sized, radius
-- dispatch: subchunks
-- order: n
-- @query
WITH b AS (
    SELECT objectId, ra_PS, decl_PS FROM Object
    WHERE ra_PS BETWEEN :ra_min AND :ra_max AND decl_PS BETWEEN :dec_min AND :dec_max)
SELECT COUNT(*) AS n
FROM b AS o1 JOIN b AS o2
  ON o2.decl_PS BETWEEN o1.decl_PS - :radius_deg AND o1.decl_PS + :radius_deg
 AND o1.objectId < o2.objectId
WHERE angSep(o1.ra_PS, o1.decl_PS, o2.ra_PS, o2.decl_PS) < :radius_deg
-- @chunk
SELECT
 (SELECT COUNT(*) FROM {Object} AS o1 JOIN {Object} AS o2
    ON o2.subChunkId = o1.subChunkId AND o1.objectId < o2.objectId
   AND o2.decl_PS BETWEEN o1.decl_PS - :radius_deg AND o1.decl_PS + :radius_deg
  WHERE o1.subChunkId IN ({subChunkIds})
    AND o1.ra_PS BETWEEN :ra_min AND :ra_max AND o1.decl_PS BETWEEN :dec_min AND :dec_max
    AND o2.ra_PS BETWEEN :ra_min AND :ra_max AND o2.decl_PS BETWEEN :dec_min AND :dec_max
    AND angSep(o1.ra_PS, o1.decl_PS, o2.ra_PS, o2.decl_PS) < :radius_deg)
 +
 (SELECT COUNT(*) FROM {Object} AS o1 JOIN {ObjectFullOverlap} AS o2
    ON o2.subChunkId = o1.subChunkId AND o1.objectId < o2.objectId
   AND o2.decl_PS BETWEEN o1.decl_PS - :radius_deg AND o1.decl_PS + :radius_deg
  WHERE o1.subChunkId IN ({subChunkIds})
    AND o1.ra_PS BETWEEN :ra_min AND :ra_max AND o1.decl_PS BETWEEN :dec_min AND :dec_max
    AND o2.ra_PS BETWEEN :ra_min AND :ra_max AND o2.decl_PS BETWEEN :dec_min AND :dec_max
    AND angSep(o1.ra_PS, o1.decl_PS, o2.ra_PS, o2.decl_PS) < :radius_deg) AS n
-- @merge
SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS n FROM partials
