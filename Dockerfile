# Container image of duix_exporter with a Docker daemon: `make image` runs
# `docker build` with this file where `docker info` answers. Without a
# daemon (and without pulling the bases below), `make image` builds the
# same layout with crane instead (deploy/image/build.sh); that is the image
# `make test` runs under podman.
#
#   docker run -p 9866:9866 -v $PWD/duix.yml:/etc/duix_exporter/duix.yml:ro \
#     -v $PWD/keys:/etc/duix_exporter/keys:ro ghcr.io/duix-exporter/duix_exporter:0.1.0

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Build information; `make image` passes the repository's.
ARG VERSION=unknown
ARG REVISION=unknown
ARG BRANCH=unknown
RUN CGO_ENABLED=0 go build -trimpath -o /out/duix_exporter \
      -ldflags "-s -w \
        -X github.com/prometheus/common/version.Version=${VERSION} \
        -X github.com/prometheus/common/version.Revision=${REVISION} \
        -X github.com/prometheus/common/version.Branch=${BRANCH} \
        -X github.com/prometheus/common/version.BuildUser=docker \
        -X github.com/prometheus/common/version.BuildDate=$(date -u +%Y%m%d-%H:%M:%S)" \
      . \
 && /out/duix_exporter --version

# Static binary, CA certificates and time zones, nothing else.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=unknown
ARG REVISION=unknown
ARG SOURCE=https://github.com/duix-exporter/duix_exporter
LABEL org.opencontainers.image.title="duix_exporter" \
      org.opencontainers.image.description="Prometheus exporter for apps on the Duix digital-human platform" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/duix_exporter /bin/duix_exporter
USER 65532:65532
WORKDIR /
EXPOSE 9866
ENTRYPOINT ["/bin/duix_exporter"]
CMD ["--config.file=/etc/duix_exporter/duix.yml"]
