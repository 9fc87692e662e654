-- salt-rs master group, schema version 3: eauth tokens shared by the group
-- (`eauth_tokens: postgres`, the default in a group; docs/group.md), so a token made on one
-- master works on every master. Only the token's sha256 digest is stored: a copy of the
-- database gives no usable token. `tdata` is Salt's token dict as `salt.payload.dumps`
-- writes it (msgpack), its `token` field left empty.

CREATE TABLE IF NOT EXISTS salt_rs_tokens (
    cluster_id  text NOT NULL,
    token_hash  text NOT NULL,
    expire      double precision NOT NULL,
    tdata       bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, token_hash)
);
CREATE INDEX IF NOT EXISTS salt_rs_tokens_expire ON salt_rs_tokens (cluster_id, expire);
