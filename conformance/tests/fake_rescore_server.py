"""A reference engine with one defect in its replies to prompt_logprobs requests, for the bad-reply
checks of --rescore-endpoint: `missing` leaves prompt_logprobs out, `short` lists only the token
itself, `ids` reports other prompt_token_ids than those sent. Prints its URL as serve does."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.reply({"object": "list", "data": [{"id": "fixture", "object": "model", "owned_by": "fake"}]})

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = request["prompt"]
        rows = [None] + [{str(token): {"logprob": -0.5}} for token in prompt[1:]]
        if MODE != "short":
            for row in rows[1:]:
                row.update({str(900 + i): {"logprob": -8.0} for i in range(request["prompt_logprobs"])})
        choice = {"index": 0, "text": "", "token_ids": [1], "finish_reason": "length",
                  "prompt_token_ids": [t + 1 for t in prompt] if MODE == "ids" else prompt}
        if MODE != "missing":
            choice["prompt_logprobs"] = rows
        self.reply({"id": "x", "object": "text_completion", "model": "fixture", "choices": [choice],
                    "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1, "total_tokens": len(prompt) + 1}})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"listening on http://127.0.0.1:{server.server_address[1]}/", flush=True)
server.serve_forever()
