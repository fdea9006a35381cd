-- catbench query-suite functions as DuckDB macros (statements separated by a line
-- ending in ';'). Twins of udf_mysql.sql.
--
-- fluxToAbMag(f): AB magnitude of a flux in erg/s/cm^2/Hz; NULL for f <= 0 or NULL.
CREATE OR REPLACE MACRO fluxToAbMag(f) AS
    CASE WHEN f > 0 THEN -2.5 * log10(f) - 48.6 ELSE NULL END;
-- angSep(ra1, dec1, ra2, dec2): angular separation in degrees (haversine formula).
CREATE OR REPLACE MACRO angSep(ra1, dec1, ra2, dec2) AS
    degrees(2 * asin(least(1, sqrt(
        pow(sin(radians(dec2 - dec1) / 2), 2)
        + cos(radians(dec1)) * cos(radians(dec2)) * pow(sin(radians(ra2 - ra1) / 2), 2)))));
