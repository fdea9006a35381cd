-- LV3: spatially restricted filter, a 1 x 1 deg box with magnitude and colour cuts (DMTR-21 3.3.3).
-- place: 3
-- params: ra_min, ra_max, dec_min, dec_max, z_min, z_max, gr_min, gr_max, iz_min, iz_max
-- defaults: box_deg=1.0, z_min=20.0, z_max=23.0, gr_min=0.2, gr_max=1.0, iz_min=0.0, iz_max=0.4
-- draw: box, sized
-- dispatch: box
-- order: n
-- @query
SELECT COUNT(*) AS n FROM Object
WHERE ra_PS BETWEEN :ra_min AND :ra_max AND decl_PS BETWEEN :dec_min AND :dec_max
  AND fluxToAbMag(zFlux_PS) BETWEEN :z_min AND :z_max
  AND fluxToAbMag(gFlux_PS) - fluxToAbMag(rFlux_PS) BETWEEN :gr_min AND :gr_max
  AND fluxToAbMag(iFlux_PS) - fluxToAbMag(zFlux_PS) BETWEEN :iz_min AND :iz_max
-- @chunk
SELECT COUNT(*) AS n FROM {Object}
WHERE ra_PS BETWEEN :ra_min AND :ra_max AND decl_PS BETWEEN :dec_min AND :dec_max
  AND fluxToAbMag(zFlux_PS) BETWEEN :z_min AND :z_max
  AND fluxToAbMag(gFlux_PS) - fluxToAbMag(rFlux_PS) BETWEEN :gr_min AND :gr_max
  AND fluxToAbMag(iFlux_PS) - fluxToAbMag(zFlux_PS) BETWEEN :iz_min AND :iz_max
-- @merge
SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) AS n FROM partials
