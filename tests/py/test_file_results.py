"""Files from tools' binary results, read with the official, unmodified `openai` Python
package (driven by tests/file_results.rs): an agent's OpenAPI tools answer a PNG and a
PDF; the response cites the saved PDF on its message (`container_file_citation`), the
client fetches its bytes with `files.content`, with its content type, and a client of
another tenant gets a 404 for the same id.

Environment:
  TOOLGATE_BASE_URL  http://127.0.0.1:PORT/v1
  ACME_KEY           a client key of the tenant that runs the agent
  GLOBEX_KEY         a client key of another tenant
  CARD_FILE          the PDF the API serves for pet 1, to compare
Prints one JSON line: the run id and the file id.
"""

import json
import os
import unittest

import openai
from openai import OpenAI

BASE_URL = os.environ["TOOLGATE_BASE_URL"]


def client(key):
    return OpenAI(base_url=BASE_URL, api_key=key, max_retries=0)


class FileResults(unittest.TestCase):
    def test_a_pdf_result_is_cited_and_fetched_and_walled(self):
        acme = client(os.environ["ACME_KEY"])
        response = acme.responses.create(model="agent:media", input="Show me pet 1.")
        self.assertEqual(response.status, "completed")
        calls = [o for o in response.output if o.type == "mcp_call"]
        self.assertEqual([c.name for c in calls], ["media__getPhoto", "media__getCard"])
        # The model saw the image as an image and the PDF as a file it can read.
        self.assertIn("[image image/png", calls[0].output)
        self.assertIn("[file files/file-", calls[1].output)
        self.assertIn("card-1.pdf, application/pdf", calls[1].output)
        message = [o for o in response.output if o.type == "message"][-1]
        citations = [a for a in message.content[0].annotations if a.type == "container_file_citation"]
        self.assertEqual(len(citations), 1, message)
        cite = citations[0]
        self.assertEqual(cite.filename, "card-1.pdf")
        self.assertTrue(cite.file_id.startswith("file-" + cite.container_id + "-"), cite)

        with open(os.environ["CARD_FILE"], "rb") as f:
            expected = f.read()
        raw = acme.files.with_raw_response.content(cite.file_id)
        self.assertEqual(raw.headers["content-type"], "application/pdf")
        self.assertEqual(raw.http_response.content, expected)
        self.assertEqual(acme.files.content(cite.file_id).read(), expected)

        globex = client(os.environ["GLOBEX_KEY"])
        with self.assertRaises(openai.NotFoundError):
            globex.files.content(cite.file_id)
        with self.assertRaises(openai.NotFoundError):
            acme.files.content("file-" + cite.container_id + "-000000000000")
        print(json.dumps({"run_id": cite.container_id, "file_id": cite.file_id}))


if __name__ == "__main__":
    unittest.main()
