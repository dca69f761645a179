"""A small API whose answers are not JSON (FastAPI, /openapi.json), for
tests/file_results.rs: a pet's photo (a PNG) and its vaccination card (a PDF, with a
Content-Disposition file name). Usage: python media_api.py PORT. The bytes it serves
are fixed, so the test can compare what a client fetches back."""
import base64
import sys

import uvicorn
from fastapi import FastAPI
from fastapi.responses import Response

app = FastAPI(title="Media", version="1.0.0")

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def card(pet_id: int) -> bytes:
    """A one-page PDF naming the pet (with the binary comment line PDF writers add)."""
    return (
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
        b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] >> endobj\n"
        b"% vaccination card of pet " + str(pet_id).encode() + b"\n"
        b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )


@app.get("/pets/{pet_id}/photo", operation_id="getPhoto", summary="A pet's photo",
         responses={200: {"content": {"image/png": {}}}})
def photo(pet_id: int):
    return Response(content=PNG, media_type="image/png")


@app.get("/pets/{pet_id}/card", operation_id="getCard", summary="A pet's vaccination card",
         responses={200: {"content": {"application/pdf": {}}}})
def vaccination_card(pet_id: int):
    return Response(
        content=card(pet_id),
        media_type="application/pdf",
        headers={"Content-Disposition": f'attachment; filename="card-{pet_id}.pdf"'},
    )


if __name__ == "__main__":
    if sys.argv[1] == "--print-card":
        sys.stdout.buffer.write(card(int(sys.argv[2])))
        sys.exit(0)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
