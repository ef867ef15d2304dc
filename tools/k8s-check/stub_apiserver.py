#!/usr/bin/env python3
"""A stand-in Kubernetes API server for `kubectl apply --dry-run=client`.

kubectl resolves a manifest's kinds through the server's discovery documents
before a client-side dry run, and asks for the live object to compute its
patch.  This stub answers discovery with the kinds of deploy/kubernetes/
(v1 ConfigMap, Secret, Service, Namespace; apps/v1 DaemonSet) and 404 for
every object, so kubectl reports "created (dry run)".  It listens on
127.0.0.1 on a free port, prints the port on its first line, and stores
nothing.  Python 3 standard library only.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

VERBS = ["create", "get", "list", "patch", "update", "delete"]


def resource(name, kind, namespaced=True):
    return {"name": name, "singularName": kind.lower(), "namespaced": namespaced,
            "kind": kind, "verbs": VERBS}


DISCOVERY = {
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1",
              "groups": [{"name": "apps",
                          "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                          "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1",
                "resources": [resource("configmaps", "ConfigMap"),
                              resource("secrets", "Secret"),
                              resource("services", "Service"),
                              resource("namespaces", "Namespace", False)]},
    "/apis/apps/v1": {"kind": "APIResourceList", "groupVersion": "apps/v1",
                      "resources": [resource("daemonsets", "DaemonSet")]},
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        doc = DISCOVERY.get(self.path.split("?")[0])
        code = 200 if doc else 404
        if not doc:
            doc = {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "reason": "NotFound", "code": 404}
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
