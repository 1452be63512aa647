-- V004: processing starts, counted before the work.
--
-- The processor adds one to `starts` of every message of a batch, and
-- commits that, before the batch's business transaction begins. A failed
-- attempt adds one to `attempts` when it is recorded, so while a message
-- is PENDING or FAILED, starts - attempts counts the starts that never
-- reached an outcome: the process crashed, was killed or hung on it. Such
-- a message is processed alone next time, and the pump turns a head with
-- msgx.pipeline.crash-loop-starts of them into DEAD(EXHAUSTED) crash-loop.
-- Replay sets it back to 0 with attempts.
ALTER TABLE proc_state ADD COLUMN starts integer NOT NULL DEFAULT 0 CHECK (starts >= 0);
ALTER TABLE proc_state_hst ADD COLUMN starts integer NOT NULL DEFAULT 0;
