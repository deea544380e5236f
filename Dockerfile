# The API and worker image (server mode: FalkorDB, Qdrant and Redis run as their own services).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY automem ./automem
COPY enrichment ./enrichment
RUN pip install --no-cache-dir . && useradd --system --uid 10001 automem
USER automem
EXPOSE 8001
CMD ["automem", "serve", "--host", "0.0.0.0"]
