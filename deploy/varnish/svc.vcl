# Varnish in front of svc's hosted sites (docs/operator.md, "With a CDN"). Varnish 6 or 7 with the
# xkey vmod (Debian: apt-get install varnish varnish-modules). svc runs with
#   SVC_CDN_PURGE=varnish  SVC_CDN_PURGE_URL=http://<this varnish>:6081[,http://<another>:6081]
# and sends `PURGE /` with the keys to purge in `xkey-purge`, after every change of a site.
#
# What is cached is svc's to say, answer by answer: only an answer carrying Surrogate-Key (a public
# site's file, with s-maxage) is stored; everything else (the API, the dashboard, password forms,
# private sites, 404 and 451 pages, previews) goes to svc every time, whatever cookies it carries.
vcl 4.1;

import directors;
import xkey;

# BEGIN backends: the svc nodes (any node answers any request).
backend svc1 { .host = "127.0.0.1"; .port = "8787"; }
backend svc2 { .host = "127.0.0.1"; .port = "8788"; }

sub vcl_init {
    new nodes = directors.round_robin();
    nodes.add_backend(svc1);
    nodes.add_backend(svc2);
}
# END backends

# Who may purge: the svc nodes' addresses.
acl purgers {
    "127.0.0.1";
    "::1";
}

sub vcl_recv {
    set req.backend_hint = nodes.backend();
    if (req.method == "PURGE") {
        if (client.ip !~ purgers) {
            return (synth(403, "Forbidden"));
        }
        if (!req.http.xkey-purge) {
            return (synth(400, "xkey-purge header required"));
        }
        set req.http.n-gone = xkey.purge(req.http.xkey-purge);
        return (synth(200, "Purged " + req.http.n-gone + " objects"));
    }
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # Looked up whatever the cookies or credentials: a stored answer is a public file, the same for
    # everyone; what depends on a cookie (an unlocked private site, the dashboard) is never stored.
    return (hash);
}

sub vcl_backend_response {
    if (!beresp.http.Surrogate-Key) {
        # Not for a shared cache: fetched again for each request (hit-for-miss: should the URL
        # become cacheable, as a site made public, its next answer is stored).
        set beresp.uncacheable = true;
        set beresp.ttl = 120s;
        return (deliver);
    }
    # The lifetime comes from s-maxage; the keys svc purges by are the xkey vmod's.
    set beresp.http.xkey = beresp.http.Surrogate-Key;
    # A purged answer must never be served again, not even while a new one is fetched.
    set beresp.grace = 0s;
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "HIT";
    } else {
        set resp.http.X-Cache = "MISS";
    }
    unset resp.http.xkey;
    unset resp.http.Surrogate-Key;
    unset resp.http.Cache-Tag;
}
