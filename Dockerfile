# The API and worker image (server mode: FalkorDB, Qdrant and Redis run as their own services).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# WordNet for enrichment's category words (WORDNET_DIR=/usr/share/wordnet).
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends wordnet-base \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY automem ./automem
COPY enrichment ./enrichment
RUN pip install --no-cache-dir . && useradd --system --uid 10001 automem
USER automem
EXPOSE 8001
CMD ["automem", "serve", "--host", "0.0.0.0"]
