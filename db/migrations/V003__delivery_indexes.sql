-- V003: an index that finds the open KAFKA:schd events of one flight.
--
-- The schd-aggregator's flush visits each flight with PENDING events (its
-- oldest and newest event), its acknowledgement marks the older PENDING
-- events of the flight merged, a dead event takes them with it, and a
-- replay of dead letters looks up the DEAD events of a flight. Keyed by
-- (flid, event_id), each of those is a probe of one flight's few rows,
-- whatever the table's statistics say; without it they scanned every
-- PENDING event of the target, a cost that grew with the backlog.
--
-- Queries repeat the predicate (or state = 'PENDING' / 'DEAD', which
-- implies it) for the planner to pick this index.
CREATE INDEX msg_event_schd_open_idx ON msg_event (flid, event_id)
    WHERE target = 'KAFKA:schd' AND state IN ('PENDING', 'DEAD');

-- Replaced by the index above: (flid, state_version) gave no event_id
-- order within a flight, and every index costs each outbox write.
DROP INDEX msg_event_schd_pending_idx;
