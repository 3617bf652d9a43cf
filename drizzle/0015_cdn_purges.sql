CREATE TABLE "cdn_purges" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"keys" text[] NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"due_at" timestamp with time zone NOT NULL,
	"round" smallint DEFAULT 1 NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text
);
--> statement-breakpoint
CREATE INDEX "cdn_purges_due_idx" ON "cdn_purges" USING btree ("due_at");