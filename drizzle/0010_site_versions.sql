CREATE TABLE "site_traffic" (
	"site_id" text NOT NULL,
	"day" date NOT NULL,
	"requests" bigint DEFAULT 0 NOT NULL,
	"bytes" bigint DEFAULT 0 NOT NULL,
	"preview_requests" bigint DEFAULT 0 NOT NULL,
	"preview_bytes" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "site_traffic_site_id_day_pk" PRIMARY KEY("site_id","day")
);
--> statement-breakpoint
CREATE TABLE "site_version_files" (
	"site_id" text NOT NULL,
	"version" integer NOT NULL,
	"path" text NOT NULL,
	"blob_key" text NOT NULL,
	"size" bigint NOT NULL,
	"content_type" text NOT NULL,
	"sha256" text NOT NULL,
	CONSTRAINT "site_version_files_site_id_version_path_pk" PRIMARY KEY("site_id","version","path")
);
--> statement-breakpoint
CREATE TABLE "site_versions" (
	"site_id" text NOT NULL,
	"version" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"actor" jsonb NOT NULL,
	"action" text NOT NULL,
	"summary" text NOT NULL,
	"entry_point" text NOT NULL,
	"file_count" integer NOT NULL,
	"bytes" bigint NOT NULL,
	"rollback_of" integer,
	"request_id" text,
	CONSTRAINT "site_versions_site_id_version_pk" PRIMARY KEY("site_id","version")
);
--> statement-breakpoint
CREATE TABLE "version_retention" (
	"account_id" text PRIMARY KEY NOT NULL,
	"keep_last" integer NOT NULL,
	"keep_days" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "site_traffic" ADD CONSTRAINT "site_traffic_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_version_files" ADD CONSTRAINT "site_version_files_site_id_version_site_versions_site_id_version_fk" FOREIGN KEY ("site_id","version") REFERENCES "public"."site_versions"("site_id","version") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "site_versions" ADD CONSTRAINT "site_versions_site_id_sites_id_fk" FOREIGN KEY ("site_id") REFERENCES "public"."sites"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "version_retention" ADD CONSTRAINT "version_retention_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "site_version_files_sha_idx" ON "site_version_files" USING btree ("site_id","sha256");--> statement-breakpoint
CREATE UNIQUE INDEX "site_versions_request_idx" ON "site_versions" USING btree ("site_id","request_id");--> statement-breakpoint
-- Hand-written: every site that exists already starts with version 1, its files as they are.
INSERT INTO "site_versions" ("site_id", "version", "created_at", "actor", "action", "summary", "entry_point", "file_count", "bytes")
SELECT s."id", 1, s."updated_at", '{"kind":"operator"}'::jsonb, 'create', 'the files the site had when versions began', s."entry_point",
       (SELECT count(*) FROM "site_files" f WHERE f."site_id" = s."id"),
       (SELECT coalesce(sum(f."size"), 0) FROM "site_files" f WHERE f."site_id" = s."id")
  FROM "sites" s;--> statement-breakpoint
INSERT INTO "site_version_files" ("site_id", "version", "path", "blob_key", "size", "content_type", "sha256")
SELECT "site_id", 1, "path", "blob_key", "size", "content_type", "sha256" FROM "site_files";
