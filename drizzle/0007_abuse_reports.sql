CREATE TABLE "abuse_reports" (
	"id" text PRIMARY KEY NOT NULL,
	"url" text NOT NULL,
	"site_id" text,
	"site_slug" text NOT NULL,
	"category" text NOT NULL,
	"message" text NOT NULL,
	"contact" text,
	"address" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "abuse_reports_created_idx" ON "abuse_reports" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "abuse_reports_site_idx" ON "abuse_reports" USING btree ("site_id");