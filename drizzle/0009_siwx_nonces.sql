CREATE TABLE "siwx_nonces" (
	"nonce" text PRIMARY KEY NOT NULL,
	"address" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "siwx_nonces_expires_at_idx" ON "siwx_nonces" USING btree ("expires_at");