"""Initial schema: beliefs, ledger, provenance, job outbox, users, meta.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

The embedding dimension is a parameter of this revision: ``config.attributes
["embedding_dim"]`` (set by ``mem01session db upgrade --embedding-dim``), else
``-x embedding_dim=N``, else 1536.
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import text

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _embedding_params() -> tuple[int, str | None]:
    attrs = context.config.attributes
    x_args = context.get_x_argument(as_dictionary=True)
    dim = int(attrs.get("embedding_dim") or x_args.get("embedding_dim") or 1536)
    if not 1 <= dim <= 16000:
        raise ValueError(f"embedding_dim must be between 1 and 16000, got {dim}")
    model = attrs.get("embedding_model") or x_args.get("embedding_model")
    return dim, model


def upgrade() -> None:
    dim, model = _embedding_params()
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute("CREATE EXTENSION IF NOT EXISTS btree_gin")
    op.execute(
        """
        CREATE TABLE memory_meta (
            id smallint NOT NULL,
            embedding_model text,
            embedding_dim integer NOT NULL,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT memory_meta_pkey PRIMARY KEY (id),
            CONSTRAINT memory_meta_single_row CHECK (id = 1)
        )
        """
    )
    op.get_bind().execute(
        text("INSERT INTO memory_meta (id, embedding_model, embedding_dim) VALUES (1, :m, :d)"),
        {"m": model, "d": dim},
    )
    op.execute(
        """
        CREATE TABLE memory_users (
            user_id text NOT NULL,
            version bigint NOT NULL DEFAULT 0,
            erased_at timestamptz,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT memory_users_pkey PRIMARY KEY (user_id)
        )
        """
    )
    op.execute(
        f"""
        CREATE TABLE beliefs (
            user_id text NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            content text NOT NULL,
            norm_content text NOT NULL,
            key text,
            status text NOT NULL DEFAULT 'active',
            confidence double precision NOT NULL DEFAULT 0.8,
            valid_from timestamptz NOT NULL DEFAULT now(),
            valid_to timestamptz,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            last_confirmed_at timestamptz,
            version integer NOT NULL DEFAULT 1,
            superseded_by bigint,
            merged_into bigint,
            embedding vector({dim}),
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
            CONSTRAINT beliefs_pkey PRIMARY KEY (user_id, id),
            CONSTRAINT beliefs_status_valid
                CHECK (status IN ('active', 'superseded', 'invalidated', 'merged')),
            CONSTRAINT beliefs_confidence_range CHECK (confidence >= 0 AND confidence <= 1),
            CONSTRAINT beliefs_version_positive CHECK (version >= 1)
        )
        """
    )
    op.execute("CREATE INDEX beliefs_user_status_idx ON beliefs (user_id, status)")
    op.execute("CREATE INDEX beliefs_user_key_idx ON beliefs (user_id, key)")
    op.execute("CREATE INDEX beliefs_user_tsv_idx ON beliefs USING gin (user_id, tsv)")
    op.execute(
        """
        CREATE TABLE belief_events (
            user_id text NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            op text NOT NULL,
            belief_id bigint,
            related_ids bigint[] NOT NULL DEFAULT '{}',
            before jsonb,
            after jsonb,
            reason text,
            job_id bigint,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT belief_events_pkey PRIMARY KEY (user_id, id),
            CONSTRAINT belief_events_op_valid CHECK (op IN ('ADD', 'CONFIRM', 'UPDATE',
                'SUPERSEDE', 'INVALIDATE', 'MERGE', 'CORRECT', 'FORGET'))
        )
        """
    )
    op.execute("CREATE INDEX belief_events_user_belief_idx ON belief_events (user_id, belief_id)")
    op.execute(
        """
        CREATE TABLE belief_sources (
            user_id text NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            belief_id bigint NOT NULL,
            session_id text,
            item_ref text,
            evidence text,
            observed_at timestamptz NOT NULL DEFAULT now(),
            extractor text,
            job_id bigint,
            created_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT belief_sources_pkey PRIMARY KEY (user_id, id)
        )
        """
    )
    op.execute("CREATE INDEX belief_sources_user_belief_idx ON belief_sources (user_id, belief_id)")
    op.execute(
        """
        CREATE TABLE memory_jobs (
            user_id text NOT NULL,
            id bigint GENERATED ALWAYS AS IDENTITY,
            session_id text NOT NULL,
            payload jsonb NOT NULL,
            status text NOT NULL DEFAULT 'pending',
            attempts integer NOT NULL DEFAULT 0,
            last_error text,
            lease_owner text,
            lease_until timestamptz,
            run_after timestamptz NOT NULL DEFAULT now(),
            idempotency_key text NOT NULL,
            usage jsonb,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            CONSTRAINT memory_jobs_pkey PRIMARY KEY (user_id, id),
            CONSTRAINT memory_jobs_user_idempotency_key UNIQUE (user_id, idempotency_key),
            CONSTRAINT memory_jobs_status_valid
                CHECK (status IN ('pending', 'running', 'done', 'failed')),
            CONSTRAINT memory_jobs_attempts_nonnegative CHECK (attempts >= 0)
        )
        """
    )
    op.execute("CREATE INDEX memory_jobs_user_status_idx ON memory_jobs (user_id, status, id)")


def downgrade() -> None:
    for table in (
        "memory_jobs",
        "belief_sources",
        "belief_events",
        "beliefs",
        "memory_users",
        "memory_meta",
    ):
        op.execute(f"DROP TABLE IF EXISTS {table}")
