"""Episodes: what the user said, verbatim and dated, beside the beliefs drawn from it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

- ``episodes``: one row per passage of a message of a turn (a message too long for the
  memory block is split into several), with when it was said (``said_at``), where
  (``session_id``, the turn's job ``job_id``, the message's ``item_ref``), a vector named
  by its model and full-text terms. Written once, by the worker, in the transaction that
  applies the turn; never edited, except ``hidden_at``, set when a belief drawn from it is
  forgotten (its words then stay out of recall).
- ``episode_terms`` and ``memory_users.episodes``: how many of a user's recallable
  episodes hold each word, and how many there are (recall weighs a word by its rarity,
  as ``belief_terms`` does for beliefs).
- ``belief_sources.episode_id``: the episode a belief was drawn from.

On a Citus coordinator the two new tables are distributed by ``user_id`` and co-located
with ``beliefs`` (see revision 0006).

Downgrading drops the two tables and the two columns, and with them every episode.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

NEW_TABLES = ("episodes", "episode_terms")


def _on_coordinator() -> bool:
    bind = op.get_bind()
    if bind.execute(text("SELECT 1 FROM pg_extension WHERE extname = 'citus'")).first() is None:
        return False
    return bool(bind.execute(text("SELECT citus_is_coordinator()")).scalar())


def _distributed(table: str) -> bool:
    found = op.get_bind().execute(
        text("SELECT 1 FROM pg_dist_partition WHERE logicalrelid = CAST(:t AS regclass)"),
        {"t": table},
    )
    return found.first() is not None


def upgrade() -> None:
    op.execute("CREATE SEQUENCE episodes_id_seq AS bigint")
    op.execute(
        """
        CREATE TABLE episodes (
            user_id text NOT NULL,
            id bigint NOT NULL DEFAULT nextval('episodes_id_seq'::regclass),
            session_id text NOT NULL,
            job_id bigint NOT NULL,
            message smallint NOT NULL,
            passage smallint NOT NULL DEFAULT 0,
            item_ref text,
            role text NOT NULL,
            content text NOT NULL,
            said_at timestamptz NOT NULL,
            embedding vector,
            embedding_model text,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
            hidden_at timestamptz,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT episodes_pkey PRIMARY KEY (user_id, id),
            CONSTRAINT episodes_user_job_message_passage_key
                UNIQUE (user_id, job_id, message, passage),
            CONSTRAINT episodes_role_valid CHECK (role IN ('user', 'assistant')),
            CONSTRAINT episodes_embedding_model_named
                CHECK ((embedding IS NULL) = (embedding_model IS NULL))
        )
        """
    )
    op.execute("ALTER SEQUENCE episodes_id_seq OWNED BY episodes.id")
    op.execute("CREATE INDEX episodes_user_said_idx ON episodes (user_id, said_at)")
    op.execute("CREATE INDEX episodes_user_session_idx ON episodes (user_id, session_id, said_at)")
    op.execute("CREATE INDEX episodes_user_tsv_idx ON episodes USING gin (user_id, tsv)")
    op.execute(
        """
        CREATE TABLE episode_terms (
            user_id text NOT NULL,
            lexeme text NOT NULL,
            episodes integer NOT NULL,
            CONSTRAINT episode_terms_pkey PRIMARY KEY (user_id, lexeme),
            CONSTRAINT episode_terms_episodes_nonnegative CHECK (episodes >= 0)
        )
        """
    )
    op.execute("ALTER TABLE memory_users ADD COLUMN episodes integer NOT NULL DEFAULT 0")
    op.execute("ALTER TABLE belief_sources ADD COLUMN episode_id bigint")
    op.execute(
        "CREATE INDEX belief_sources_user_episode_idx ON belief_sources (user_id, episode_id) "
        "WHERE episode_id IS NOT NULL"
    )
    if _on_coordinator():
        for table in NEW_TABLES:
            if not _distributed(table):
                op.execute(
                    f"SELECT create_distributed_table('{table}', 'user_id', "
                    "colocate_with => 'beliefs')"
                )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS belief_sources_user_episode_idx")
    op.execute("ALTER TABLE belief_sources DROP COLUMN IF EXISTS episode_id")
    op.execute("ALTER TABLE memory_users DROP COLUMN IF EXISTS episodes")
    op.execute("DROP TABLE IF EXISTS episode_terms")
    op.execute("DROP TABLE IF EXISTS episodes")
