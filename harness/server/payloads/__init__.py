"""Payload shapes of the three provider APIs: one module per API, each a pure function
from (request, reply content, dialect) to the body units of a healthy reply.
``harness.server.apis`` documents what each unit is and what ``event:N`` counts."""
