-- LV1: object retrieval by id (LDM-135; DMTR-21 3.3.1).
-- place: 1
-- params: object_id
-- draw: object
-- dispatch: index
-- order: objectId
-- @query
SELECT * FROM Object WHERE objectId = :object_id
-- @chunk
SELECT * FROM {Object} WHERE objectId = :object_id
