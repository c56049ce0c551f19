"""A server that answers as vLLM, SGLang and TGI do in form, and wrongly in substance, for the
checks that differential holds against it. It listens on a free port of 127.0.0.1, writes the
port to PORT_FILE and serves until killed.

    hostile_server.py MODE PORT_FILE

MODE:
  wrong      every answer is new random token ids, whole or streamed (vLLM's /v1/completions)
  shrinking  SGLang's /generate: answers whole are right; streamed, each chunk claims to hold
             the answer so far (meta_info.completion_tokens) yet holds fewer ids than the last
  malformed  TGI's /generate: answers whole are right; /generate_stream's events break the
             protocol, each request another way
  endless    vLLM's /v1/completions: answers whole are right; streams send tokens and never end
"""
import itertools
import os
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, PORT_FILE = sys.argv[1], sys.argv[2]
VOCABULARY = 259  # the fixture pair's: every id a model of it could give
requests = itertools.count()
lock = threading.Lock()


def right_ids(prompt, count):
    """The same ids for the same prompt, whoever else is served."""
    seed = sum(prompt) if isinstance(prompt, list) else sum(map(ord, prompt))
    return [(seed + i) % VOCABULARY for i in range(count)]


def text_of(ids):
    return "".join(chr(ord("a") + i % 26) for i in ids)


# Each a TGI event that breaks the protocol: not JSON, no token, a token without its id, an id
# that is text, special not a boolean, a huge number, an event without data.
MALFORMED_TGI = [
    "data: {\"token\": \n\n",
    "data: {\"generated_text\": null}\n\n",
    "data: {\"token\": {\"text\": \"a\", \"special\": false}}\n\n",
    "data: {\"token\": {\"id\": \"7\", \"text\": \"a\", \"special\": false}}\n\n",
    "data: {\"token\": {\"id\": 7, \"text\": \"a\", \"special\": \"no\"}}\n\n",
    "data: {\"token\": {\"id\": 1e999, \"text\": \"a\", \"special\": false}}\n\n",
    "event: token\n\n" + "data: [DONE]\n\n",
]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path == "/v1/models":
            self.whole({"object": "list", "data": [{"id": "fixture", "object": "model", "owned_by": "hostile"}]})
        else:
            self.whole({"error": "not found"}, status=404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with lock:
            number = next(requests)
        if self.path == "/v1/completions":
            self.vllm(body)
        elif self.path == "/generate":
            self.sglang(body) if MODE == "shrinking" else self.tgi(body)
        elif self.path == "/generate_stream":
            self.tgi_stream(number)
        else:
            self.whole({"error": "not found"}, status=404)

    def whole(self, reply, status=200):
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stream(self, events):
        """Sends each event as a chunk of a chunked event stream, until the events or the
        client end."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                data = event.encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def vllm(self, body):
        count = body["max_tokens"]
        ids = random.choices(range(VOCABULARY), k=count) if MODE == "wrong" else right_ids(body["prompt"], count)
        if not body.get("stream"):
            choice = {"index": 0, "text": text_of(ids), "token_ids": ids, "finish_reason": "length"}
            self.whole({"choices": [choice], "usage": {"completion_tokens": count}})
            return

        def chunk(piece, finish):
            choice = {"index": 0, "text": text_of(piece), "token_ids": piece, "finish_reason": finish}
            return "data: " + json.dumps({"choices": [choice]}) + "\n\n"

        if MODE == "endless":
            def forever():
                while True:
                    yield chunk([random.randrange(VOCABULARY)], None)
                    time.sleep(0.001)
            self.stream(forever())
            return
        usage = "data: " + json.dumps({"choices": [], "usage": {"completion_tokens": count}}) + "\n\n"
        self.stream([chunk(ids[:1], None), chunk(ids[1:], "length"), usage, "data: [DONE]\n\n"])

    def sglang(self, body):
        count = body["sampling_params"]["max_new_tokens"]
        ids = right_ids(body.get("input_ids", body.get("text")), count)

        def reply(so_far, finish):
            meta = {"completion_tokens": len(so_far), "finish_reason": {"type": "length"} if finish else None}
            return {"text": text_of(so_far), "output_ids": so_far, "meta_info": meta}

        if not body.get("stream"):
            self.whole(reply(ids, True))
            return
        # The answer so far, then a shorter one: cumulative chunks that shrink.
        events = [reply(ids[:3], False), reply(ids[:2], False), reply(ids, True)]
        self.stream(["data: " + json.dumps(event) + "\n\n" for event in events] + ["data: [DONE]\n\n"])

    def tgi(self, body):
        count = body["parameters"]["max_new_tokens"]
        ids = right_ids(body["inputs"], count)
        tokens = [{"id": i, "text": text_of([i]), "logprob": -1.0, "special": False} for i in ids]
        details = {"finish_reason": "length", "generated_tokens": count, "tokens": tokens}
        self.whole({"generated_text": text_of(ids), "details": details})

    def tgi_stream(self, number):
        good = "data: " + json.dumps({"index": 1, "token": {"id": 5, "text": "f", "logprob": -1.0, "special": False}}) + "\n\n"
        self.stream([good, MALFORMED_TGI[number % len(MALFORMED_TGI)]])


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
with open(PORT_FILE + ".part", "w") as out:
    out.write(str(server.server_address[1]))
os.replace(PORT_FILE + ".part", PORT_FILE)
server.serve_forever()
