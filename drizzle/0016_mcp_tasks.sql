CREATE TABLE "mcp_tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"tool" text NOT NULL,
	"status" text NOT NULL,
	"status_message" text,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL,
	"ttl_ms" integer NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"result" jsonb,
	"error" jsonb,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"lease_until" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "mcp_tasks_expires_idx" ON "mcp_tasks" USING btree ("expires_at");