CREATE TABLE "account_limits" (
	"account_id" text PRIMARY KEY NOT NULL,
	"sites" integer,
	"storage_bytes" bigint,
	"files_per_site" integer,
	"file_bytes" bigint,
	"functions" integer,
	"invocations_per_month" integer,
	"tables_per_site" integer,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "audit_log" (
	"id" text PRIMARY KEY NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"actor" text NOT NULL,
	"action" text NOT NULL,
	"target_kind" text NOT NULL,
	"target" text NOT NULL,
	"reason" text NOT NULL,
	"details" jsonb
);
--> statement-breakpoint
CREATE TABLE "wallet_blocks" (
	"wallet" text PRIMARY KEY NOT NULL,
	"reason" text NOT NULL,
	"blocked_at" timestamp with time zone NOT NULL,
	"blocked_by" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "suspended_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "accounts" ADD COLUMN "suspension_reason" text;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "suspended_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "suspension_reason" text;--> statement-breakpoint
ALTER TABLE "sites" ADD COLUMN "owner_suspension" text;--> statement-breakpoint
ALTER TABLE "account_limits" ADD CONSTRAINT "account_limits_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_at_idx" ON "audit_log" USING btree ("at");--> statement-breakpoint
CREATE INDEX "audit_log_target_idx" ON "audit_log" USING btree ("target");