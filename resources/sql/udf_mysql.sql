-- catbench query-suite functions for MariaDB/MySQL (stored functions, one statement each,
-- separated by a line ending in ';'). Twins of udf_duckdb.sql: same formula, same order
-- of operations, so both engines give the same doubles.
--
-- fluxToAbMag(f): AB magnitude of a flux in erg/s/cm^2/Hz; NULL for f <= 0 or NULL.
DROP FUNCTION IF EXISTS fluxToAbMag;
CREATE FUNCTION fluxToAbMag(f DOUBLE) RETURNS DOUBLE DETERMINISTIC NO SQL
RETURN IF(f > 0, -2.5 * LOG10(f) - 48.6, NULL);
-- angSep(ra1, dec1, ra2, dec2): angular separation in degrees (haversine formula).
DROP FUNCTION IF EXISTS angSep;
CREATE FUNCTION angSep(ra1 DOUBLE, dec1 DOUBLE, ra2 DOUBLE, dec2 DOUBLE) RETURNS DOUBLE DETERMINISTIC NO SQL
RETURN DEGREES(2 * ASIN(LEAST(1, SQRT(
    POW(SIN(RADIANS(dec2 - dec1) / 2), 2)
    + COS(RADIANS(dec1)) * COS(RADIANS(dec2)) * POW(SIN(RADIANS(ra2 - ra1) / 2), 2)))));
