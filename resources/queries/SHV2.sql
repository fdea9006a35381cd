-- SHV2: Sources farther than radius_deg from their Object, Objects in a box (DMTR-21 3.3.8).
-- Sources live in their Object's chunk, so the join is chunk-local.
-- place: 8
-- params: ra_min, ra_max, dec_min, dec_max, radius_deg
-- defaults: box_deg=1.0, radius_deg=0.0001388888888888889
-- draw: box
-- dispatch: box
-- order: sourceId
-- @query
SELECT o.objectId, s.sourceId, s.ra, s.decl, o.ra_PS, o.decl_PS
FROM Object AS o JOIN Source AS s ON s.objectId = o.objectId
WHERE o.ra_PS BETWEEN :ra_min AND :ra_max AND o.decl_PS BETWEEN :dec_min AND :dec_max
  AND angSep(s.ra, s.decl, o.ra_PS, o.decl_PS) > :radius_deg
-- @chunk
SELECT o.objectId, s.sourceId, s.ra, s.decl, o.ra_PS, o.decl_PS
FROM {Object} AS o JOIN {Source} AS s ON s.objectId = o.objectId
WHERE o.ra_PS BETWEEN :ra_min AND :ra_max AND o.decl_PS BETWEEN :dec_min AND :dec_max
  AND angSep(s.ra, s.decl, o.ra_PS, o.decl_PS) > :radius_deg
