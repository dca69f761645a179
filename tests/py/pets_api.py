"""A small pet store API that serves its own OpenAPI document (FastAPI, /openapi.json),
for tests/openapi_tools.rs. Usage: python pets_api.py PORT. It needs a bearer token
(the value of the environment variable PETS_TOKEN) on writes, and records nothing on
disk."""
import os
import sys
from typing import List, Optional

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Query
from pydantic import BaseModel, Field

app = FastAPI(title="Pets", version="1.0.0")
TOKEN = os.environ.get("PETS_TOKEN", "")


class Owner(BaseModel):
    name: str
    email: Optional[str] = None


class NewPet(BaseModel):
    name: str = Field(description="The pet's name")
    tag: Optional[str] = None
    id: Optional[int] = Field(default=None, description="A number the caller picks")
    owner: Optional[Owner] = None


class Pet(NewPet):
    id: int


PETS = {1: Pet(id=1, name="Rex", tag="dog"), 2: Pet(id=2, name="Tom", tag="cat")}


@app.get("/pets", operation_id="listPets", summary="List pets", response_model=List[Pet])
def list_pets(tags: List[str] = Query(default=[]), limit: int = Query(default=10, ge=1, le=100)):
    pets = [p for p in PETS.values() if not tags or p.tag in tags]
    return pets[:limit]


@app.get("/pets/{id}", operation_id="getPet", summary="One pet by id", response_model=Pet)
def get_pet(id: int, x_request_id: Optional[str] = Header(default=None)):
    if id not in PETS:
        raise HTTPException(status_code=404, detail=f"no pet {id}")
    return PETS[id]


@app.post("/pets/{id}", operation_id="putPet", summary="Store a pet under an id",
          status_code=201)
def put_pet(id: int, pet: NewPet, authorization: Optional[str] = Header(default=None)):
    if authorization != f"Bearer {TOKEN}":
        raise HTTPException(status_code=401, detail="bad token")
    stored = Pet(**{**pet.model_dump(), "id": id})
    PETS[id] = stored
    return {**stored.model_dump(), "body_id": pet.id}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
