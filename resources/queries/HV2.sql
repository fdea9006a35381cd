-- HV2: full-sky colour filter, i - z > min_color (DMTR-21 3.3.5); returns rows.
-- place: 5
-- params: min_color
-- defaults: min_color=4.0
-- dispatch: all
-- order: objectId
-- @query
SELECT objectId, ra_PS, decl_PS, uFlux_PS, gFlux_PS, rFlux_PS, iFlux_PS, zFlux_PS, yFlux_PS
FROM Object
WHERE fluxToAbMag(iFlux_PS) - fluxToAbMag(zFlux_PS) > :min_color
-- @chunk
SELECT objectId, ra_PS, decl_PS, uFlux_PS, gFlux_PS, rFlux_PS, iFlux_PS, zFlux_PS, yFlux_PS
FROM {Object}
WHERE fluxToAbMag(iFlux_PS) - fluxToAbMag(zFlux_PS) > :min_color
