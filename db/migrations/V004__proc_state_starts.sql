-- V004: processing starts, recorded before the work.
--
-- Before a batch's business transaction begins, the processor commits a
-- row of proc_start naming the batch's ID range; the business transaction
-- deletes it with the outcomes, and a batch given up while the process
-- runs on (a rollback) deletes it afterwards. A row left behind therefore
-- means the process ended (crash, kill, hang) during that batch: before
-- it takes a head, the pump counts one unfinished start in proc_suspect
-- for each PENDING/FAILED message of the range, and deletes the row. One
-- row per batch, not one write per message.
--
-- A message with a proc_suspect row is processed alone; at
-- msgx.pipeline.crash-loop-starts the pump makes it DEAD(EXHAUSTED)
-- crash-loop. Replay deletes the row with the rest of the message's past.
-- Both tables stay small: rows exist only after the process ended during
-- a batch.
CREATE TABLE proc_start (
    id          bigserial   PRIMARY KEY,
    first_id    bigint      NOT NULL,
    last_id     bigint      NOT NULL CHECK (last_id >= first_id),
    started_at  timestamptz NOT NULL
);

CREATE TABLE proc_suspect (
    msg_id      bigint      PRIMARY KEY,
    starts      integer     NOT NULL CHECK (starts > 0)
);
