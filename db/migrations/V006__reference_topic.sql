-- V006: the reference-data topic (KAFKA:ref) and re-publish jobs.
--
-- KAFKA:ref events go through the same outbox as the flight events, written
-- in the transaction that changes ref_master. Their key (partition_key) is
-- LIST:KEY. They belong to no flight: flid is 0 for them (flight FLIDs are
-- positive, flight_schd checks it), which keeps the column NOT NULL for the
-- flight targets, whose indexes and statements rely on it; every FLID lookup
-- of the outbox names its flight target, so none of them meets a KAFKA:ref row. state_version is the msg_id of the message that made
-- the entry what it is (ref_master.last_msg_id, 0 when unknown): messages
-- are applied in msg_id order, so it only grows per key.
ALTER TABLE msg_event DROP CONSTRAINT msg_event_target_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_target_check
    CHECK (target IN ('KAFKA:msg', 'KAFKA:schd', 'KAFKA:ref'));

-- msgxctl republish: one job at a time re-sends current states to KAFKA:schd
-- (and, with reference, every ref_master entry to KAFKA:ref) through the
-- outbox, in small transactions that move the cursor with the events they
-- write, so a restart goes on after the last FLID (then LIST:KEY) done.
CREATE TABLE republish_job (
    job_id          bigserial   PRIMARY KEY,
    scope           text        NOT NULL CHECK (scope IN ('flids', 'day', 'all', 'reference')),
    flids           bigint[],                   -- scope flids: the FLIDs asked for (reference: no flight)
    day             date,                       -- scope day: the operation day
    reference       boolean     NOT NULL DEFAULT false,
    state           text        NOT NULL DEFAULT 'RUNNING'
        CHECK (state IN ('RUNNING', 'DONE', 'CANCELLED', 'FAILED')),
    cursor_flid     bigint      NOT NULL DEFAULT 0,     -- last FLID done (in FLID order)
    cursor_rtype    text,                               -- last reference entry done
    cursor_rkey     text,
    flights_total   bigint      NOT NULL DEFAULT 0,     -- counted when the job was created
    entries_total   bigint      NOT NULL DEFAULT 0,
    flights_sent    bigint      NOT NULL DEFAULT 0,
    entries_sent    bigint      NOT NULL DEFAULT 0,
    os_user         text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    finished_at     timestamptz,
    last_error      text,
    CHECK ((scope = 'flids') = (flids IS NOT NULL)),
    CHECK ((scope = 'day') = (day IS NOT NULL))
);

-- One job at a time: a second insert while one runs fails on this index.
CREATE UNIQUE INDEX republish_job_one_running_idx ON republish_job ((true))
    WHERE state = 'RUNNING';
