CREATE TABLE "accounts" (
	"id" text PRIMARY KEY NOT NULL,
	"email" text NOT NULL,
	"password_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "accounts_email_unique" UNIQUE("email")
);
--> statement-breakpoint
CREATE TABLE "personal_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	CONSTRAINT "personal_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "rate_limit_windows" (
	"key" text NOT NULL,
	"window_start" bigint NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "rate_limit_windows_key_window_start_pk" PRIMARY KEY("key","window_start")
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dataset_uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"site_id" text NOT NULL,
	"key" text NOT NULL,
	"file_name" text NOT NULL,
	"format" text NOT NULL,
	"declared_bytes" bigint NOT NULL,
	"strategy" text NOT NULL,
	"multipart_upload_id" text,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "datasets" (
	"id" text PRIMARY KEY NOT NULL,
	"site_id" text NOT NULL,
	"table_id" text NOT NULL,
	"slug" text NOT NULL,
	"name" text NOT NULL,
	"format" text NOT NULL,
	"file_name" text NOT NULL,
	"source_key" text NOT NULL,
	"source_bytes" bigint NOT NULL,
	"record_count" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "function_invocation_counts" (
	"account_id" text NOT NULL,
	"period" text NOT NULL,
	"count" bigint NOT NULL,
	CONSTRAINT "function_invocation_counts_account_id_period_pk" PRIMARY KEY("account_id","period")
);
--> statement-breakpoint
CREATE TABLE "function_memory" (
	"function_id" text NOT NULL,
	"account_id" text NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	"bytes" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "function_memory_function_id_account_id_key_pk" PRIMARY KEY("function_id","account_id","key")
);
--> statement-breakpoint
CREATE TABLE "function_secrets" (
	"function_id" text NOT NULL,
	"name" text NOT NULL,
	"value" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "function_secrets_function_id_name_pk" PRIMARY KEY("function_id","name")
);
--> statement-breakpoint
CREATE TABLE "functions" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"name" text NOT NULL,
	"slug" text NOT NULL,
	"draft_code" text NOT NULL,
	"draft_version" integer DEFAULT 1 NOT NULL,
	"live_code" text,
	"live_version" integer,
	"published_at" timestamp with time zone,
	"allow_user_invoke" boolean DEFAULT false NOT NULL,
	"state" text DEFAULT 'active' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "publish_requests" (
	"account_id" text NOT NULL,
	"request_id" text NOT NULL,
	"site_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "publish_requests_account_id_request_id_pk" PRIMARY KEY("account_id","request_id")
);
--> statement-breakpoint
CREATE TABLE "site_files" (
	"site_id" text NOT NULL,
	"path" text NOT NULL,
	"blob_key" text NOT NULL,
	"size" bigint NOT NULL,
	"content_type" text NOT NULL,
	"sha256" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "site_files_site_id_path_pk" PRIMARY KEY("site_id","path")
);
--> statement-breakpoint
CREATE TABLE "sites" (
	"id" text PRIMARY KEY NOT NULL,
	"slug" text NOT NULL,
	"owner_account_id" text,
	"owner_wallet" text,
	"visibility" text DEFAULT 'public' NOT NULL,
	"password_hash" text,
	"published" boolean DEFAULT true NOT NULL,
	"status" text DEFAULT 'created' NOT NULL,
	"entry_point" text DEFAULT 'index.html' NOT NULL,
	"content_version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "dashboard_sessions" (
	"hash" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"redirect_uris" text[] NOT NULL,
	"scopes" text[],
	"client_uri" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_grants" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"client_id" text NOT NULL,
	"scopes" text[] NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"revoked_reason" text
);
--> statement-breakpoint
CREATE TABLE "oauth_tokens" (
	"hash" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"grant_id" text NOT NULL,
	"scopes" text[] NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"redirect_uri" text,
	"code_challenge" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "table_records" (
	"id" bigint PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY (sequence name "table_records_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"table_id" text NOT NULL,
	"fields" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tables" (
	"id" text PRIMARY KEY NOT NULL,
	"site_id" text NOT NULL,
	"slug" text NOT NULL,
	"name" text NOT NULL,
	"kind" text DEFAULT 'table' NOT NULL,
	"schema" jsonb NOT NULL,
	"require_read_key" boolean DEFAULT false NOT NULL,
	"write_key_hash" text NOT NULL,
	"methods" text[] NOT NULL,
	"public_insert" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "x402_idempotency" (
	"wallet" text NOT NULL,
	"key" text NOT NULL,
	"request_hash" text NOT NULL,
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "x402_idempotency_wallet_key_pk" PRIMARY KEY("wallet","key")
);
--> statement-breakpoint
CREATE TABLE "x402_payments" (
	"payer" text NOT NULL,
	"nonce" text NOT NULL,
	"action" text NOT NULL,
	"request_hash" text NOT NULL,
	"status" text NOT NULL,
	"amount" text NOT NULL,
	"valid_before" bigint NOT NULL,
	"payload" jsonb NOT NULL,
	"tx_hash" text,
	"receipt_id" text,
	"response_status" bigint,
	"response" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "x402_payments_payer_nonce_pk" PRIMARY KEY("payer","nonce")
);
--> statement-breakpoint
CREATE TABLE "x402_receipts" (
	"receipt_id" text PRIMARY KEY NOT NULL,
	"action" text NOT NULL,
	"wallet" text NOT NULL,
	"network" text NOT NULL,
	"tx_hash" text NOT NULL,
	"recipient" text NOT NULL,
	"price" text NOT NULL,
	"currency" text NOT NULL,
	"app_id" text NOT NULL,
	"app_name" text NOT NULL,
	"visibility" text NOT NULL,
	"status" text NOT NULL,
	"created_at" text NOT NULL,
	"receipt_hash" text NOT NULL,
	"payer_nonce" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "personal_keys" ADD CONSTRAINT "personal_keys_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dataset_uploads" ADD CONSTRAINT "dataset_uploads_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "datasets" ADD CONSTRAINT "datasets_table_id_tables_id_fk" FOREIGN KEY ("table_id") REFERENCES "public"."tables"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "function_invocation_counts" ADD CONSTRAINT "function_invocation_counts_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "function_memory" ADD CONSTRAINT "function_memory_function_id_functions_id_fk" FOREIGN KEY ("function_id") REFERENCES "public"."functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "function_memory" ADD CONSTRAINT "function_memory_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "function_secrets" ADD CONSTRAINT "function_secrets_function_id_functions_id_fk" FOREIGN KEY ("function_id") REFERENCES "public"."functions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "functions" ADD CONSTRAINT "functions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "publish_requests" ADD CONSTRAINT "publish_requests_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_files" ADD CONSTRAINT "site_files_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sites" ADD CONSTRAINT "sites_owner_account_id_accounts_id_fk" FOREIGN KEY ("owner_account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "dashboard_sessions" ADD CONSTRAINT "dashboard_sessions_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD CONSTRAINT "oauth_grants_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_grants" ADD CONSTRAINT "oauth_grants_client_id_oauth_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."oauth_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_grant_id_oauth_grants_id_fk" FOREIGN KEY ("grant_id") REFERENCES "public"."oauth_grants"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "table_records" ADD CONSTRAINT "table_records_table_id_tables_id_fk" FOREIGN KEY ("table_id") REFERENCES "public"."tables"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tables" ADD CONSTRAINT "tables_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "personal_keys_account_idx" ON "personal_keys" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "dataset_uploads_key_idx" ON "dataset_uploads" USING btree ("key");--> statement-breakpoint
CREATE INDEX "dataset_uploads_site_idx" ON "dataset_uploads" USING btree ("site_id");--> statement-breakpoint
CREATE UNIQUE INDEX "datasets_site_slug_idx" ON "datasets" USING btree ("site_id","slug");--> statement-breakpoint
CREATE INDEX "datasets_table_idx" ON "datasets" USING btree ("table_id");--> statement-breakpoint
CREATE UNIQUE INDEX "functions_slug_idx" ON "functions" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "functions_account_idx" ON "functions" USING btree ("account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "sites_slug_idx" ON "sites" USING btree ("slug");--> statement-breakpoint
CREATE INDEX "sites_owner_account_idx" ON "sites" USING btree ("owner_account_id");--> statement-breakpoint
CREATE INDEX "sites_owner_wallet_idx" ON "sites" USING btree ("owner_wallet");--> statement-breakpoint
CREATE INDEX "dashboard_sessions_account_idx" ON "dashboard_sessions" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "oauth_grants_account_idx" ON "oauth_grants" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "oauth_tokens_grant_idx" ON "oauth_tokens" USING btree ("grant_id");--> statement-breakpoint
CREATE INDEX "table_records_table_id_idx" ON "table_records" USING btree ("table_id","id");--> statement-breakpoint
CREATE INDEX "table_records_fields_gin_idx" ON "table_records" USING gin ("fields" jsonb_path_ops);--> statement-breakpoint
CREATE UNIQUE INDEX "tables_site_slug_idx" ON "tables" USING btree ("site_id","slug");--> statement-breakpoint
CREATE INDEX "x402_payments_status_idx" ON "x402_payments" USING btree ("status");--> statement-breakpoint
CREATE INDEX "x402_receipts_wallet_idx" ON "x402_receipts" USING btree ("wallet");