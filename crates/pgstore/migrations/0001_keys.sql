-- salt-rs master group, schema version 1: minion keys, their change log, the group's
-- publish (AES) key. Applied once by the first master or salt-key that connects
-- (crates/pgstore/src/schema.rs); never edit a released migration, add the next file.

-- One row per group: the change-log counter (taken under this row's lock, so change
-- numbers commit in order) and the group's publish key.
CREATE TABLE salt_groups (
    cluster_id     text PRIMARY KEY,
    seq            bigint NOT NULL DEFAULT 0,
    aes_generation bigint NOT NULL DEFAULT 0,
    aes            text
);

-- Every key of every minion: at most one of accepted/pending/rejected per minion, plus
-- an optional denied key (as Salt's pki_dir).
CREATE TABLE salt_minion_keys (
    cluster_id text NOT NULL REFERENCES salt_groups ON DELETE CASCADE,
    minion_id  text NOT NULL,
    state      text NOT NULL CHECK (state IN ('accepted', 'pending', 'rejected', 'denied')),
    pem        text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, minion_id, state)
);
CREATE UNIQUE INDEX salt_minion_keys_one_state
    ON salt_minion_keys (cluster_id, minion_id) WHERE state <> 'denied';

-- The change log: one row per minion changed by a change numbered `seq` (minion_id '':
-- the publish key rotated).
-- Readers apply `seq > last` after every (re)connect; NOTIFY only says "read the log".
CREATE TABLE salt_key_log (
    cluster_id text NOT NULL REFERENCES salt_groups ON DELETE CASCADE,
    seq        bigint NOT NULL,
    minion_id  text NOT NULL,
    master     text NOT NULL,
    changed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, seq, minion_id)
);
