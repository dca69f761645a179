# toolgate's container image: the release binary on Debian, run as a non-root user.
#
#   docker build -t toolgate .                      # builds the binary in the image
#   podman build --format docker -t toolgate .      # podman: keep the HEALTHCHECK
#
# Stages: `builder` compiles with the official Rust image; `prebuilt` takes a binary
# already built for the same Debian release (container/build.sh's --prebuilt, for
# machines that reach no image registry or cannot spare the build); BINARY_FROM picks
# one. BASE_IMAGE is the runtime's Debian (container/build.sh makes one with debootstrap
# when no registry is reachable). TOOLGATE_COMMIT names the commit in `--version`, since
# the build context holds no .git.
ARG RUST_IMAGE=docker.io/library/rust:1-slim-bookworm
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim
ARG BINARY_FROM=builder

FROM ${RUST_IMAGE} AS builder
ARG TOOLGATE_COMMIT=""
ENV TOOLGATE_COMMIT=${TOOLGATE_COMMIT} CARGO_TERM_COLOR=never
# cmake and pkg-config: the C parts of the TLS and SQLite crates.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends cmake pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin toolgate \
    && install -D -m 0755 target/release/toolgate /out/toolgate

FROM ${BASE_IMAGE} AS prebuilt
COPY target/container/toolgate /out/toolgate

FROM ${BINARY_FROM} AS binary

FROM ${BASE_IMAGE} AS runtime
# curl answers the health check; ca-certificates lets tools and models use HTTPS.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 toolgate \
    && useradd --system --uid 10001 --gid toolgate --home-dir /var/lib/toolgate --create-home toolgate \
    && mkdir -p /etc/toolgate/agents /etc/toolgate/tools /var/lib/toolgate/workspace \
    && chown -R toolgate:toolgate /var/lib/toolgate
COPY --from=binary /out/toolgate /usr/local/bin/toolgate
USER toolgate
WORKDIR /var/lib/toolgate
ENV TOOLGATE_ADDR=0.0.0.0:8080 \
    TOOLGATE_DB=/var/lib/toolgate/toolgate.db \
    TOOLGATE_AGENTS=/etc/toolgate/agents \
    TOOLGATE_TOOLS=/etc/toolgate/tools \
    TOOLGATE_LOG_FORMAT=json
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["toolgate"]
CMD ["serve", "--workspace", "/var/lib/toolgate/workspace"]
