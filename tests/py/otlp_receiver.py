"""An OTLP/HTTP trace receiver for the tests: it takes `POST /v1/traces` bodies
(protobuf), decodes them with the official OpenTelemetry messages
(opentelemetry-proto), and appends one JSON line per span to the file named by its
first argument. It prints the port it listens on (127.0.0.1), then serves until it is
killed. tests/otel.rs checks what toolgate exports with it."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind) if kind else None


def attributes(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        lines = []
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                for span in ss.spans:
                    lines.append(
                        {
                            "service": resource.get("service.name"),
                            "scope": ss.scope.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "name": span.name,
                            "kind": span.kind,
                            "status": span.status.code,
                            "attributes": attributes(span.attributes),
                            "events": [
                                {"name": e.name, "attributes": attributes(e.attributes)}
                                for e in span.events
                            ],
                            "links": [
                                {"trace_id": l.trace_id.hex(), "span_id": l.span_id.hex()}
                                for l in span.links
                            ],
                            "content_type": self.headers.get("content-type"),
                        }
                    )
        with open(OUT, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
