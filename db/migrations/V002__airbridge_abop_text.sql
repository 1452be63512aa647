-- V002: FLIGHT_AIRBRIDGE.ABOP holds text.
--
-- WIRE.md section 6 lists ABOP as a date-time, but real upstream messages
-- carry a code there (sample FLOP_ABTM_01 has "D"); a real message must not
-- be rejected for it, so the value is kept as received. The history copy
-- follows the live table, or archiving would fail on such a row.
--
-- No deployment has airbridge rows yet when this runs; the USING cast only
-- keeps the statement valid on any data.

ALTER TABLE flight_airbridge
    ALTER COLUMN abop TYPE text USING abop::text;

ALTER TABLE flight_airbridge_hst
    ALTER COLUMN abop TYPE text USING abop::text;
