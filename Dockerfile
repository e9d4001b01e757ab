# Container image of duix_exporter: `make image` (docker or podman).
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
COPY --from=build /out/duix_exporter /bin/duix_exporter
USER 65532:65532
EXPOSE 9866
ENTRYPOINT ["/bin/duix_exporter"]
CMD ["--config.file=/etc/duix_exporter/duix.yml"]
