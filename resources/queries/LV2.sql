-- LV2: time series of one object's Sources (DMTR-21 3.3.2).
-- place: 2
-- params: object_id
-- draw: object
-- dispatch: index
-- order: sourceId
-- @query
SELECT sourceId, taiMidPoint, filterId, fluxToAbMag(psfFlux) AS psfMag,
       fluxToAbMag(psfFluxSigma) AS psfMagSigmaFlux, ra, decl
FROM Source WHERE objectId = :object_id
-- @chunk
SELECT sourceId, taiMidPoint, filterId, fluxToAbMag(psfFlux) AS psfMag,
       fluxToAbMag(psfFluxSigma) AS psfMagSigmaFlux, ra, decl
FROM {Source} WHERE objectId = :object_id
