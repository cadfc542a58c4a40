"""A SASL listener's gate: the connection's requests before authentication, as Kafka's
SaslServerAuthenticator handles them.

States: HANDSHAKE_OR_VERSIONS -> (ApiVersions) -> HANDSHAKE -> (SaslHandshake) ->
AUTHENTICATE -> COMPLETE, or FAILED.

- Before the handshake, only ApiVersions (once) and SaslHandshake are served; any other
  request closes the connection at once without an answer (Kafka's "Unexpected Kafka request
  of type ... during SASL handshake").
- SaslHandshake with a mechanism the listener does not offer: UNSUPPORTED_SASL_MECHANISM with
  the enabled list, and the authentication has failed.
- SaslHandshake v1: the tokens then come in SaslAuthenticate requests. Another request in
  that state is answered with ILLEGAL_SASL_STATE (where its response has a top-level error
  code; otherwise the connection is closed at once). A failed authentication is answered
  with SASL_AUTHENTICATION_FAILED and Kafka's message.
- SaslHandshake v0 (old clients): the tokens then travel raw, each a size-prefixed frame
  without a Kafka header, and so do the answers; a failure has no answer.
- After authentication every frame goes to `dispatch`; SaslHandshake/SaslAuthenticate are
  then answered ILLEGAL_SASL_STATE by their handlers, as by KafkaApis.

Once the authentication has failed (`failed`), the connection sends the answer and closes
only after `connection.failed.authentication.delay.ms`.

A SCRAM login with a delegation token (`tokenauth=true`) authenticates the token's owner and
marks the session `token_authenticated` (Kafka's KafkaPrincipal.tokenAuthenticated), which
the delegation-token APIs refuse.

Not done: re-authentication (`connections.max.reauth.ms`; session lifetime is always 0),
GSSAPI and OAUTHBEARER.
"""

from __future__ import annotations

import enum
import logging
import struct
from typing import TYPE_CHECKING, Any

from minibroker.handlers.registry import REGISTRY
from minibroker.protocol.api_keys import ApiKey
from minibroker.protocol.codec import (
    EncodedFrame,
    MalformedRequest,
    decode_body,
    decode_header,
    encode_response,
    new_response,
    peek_key_version_correlation,
    response_class,
)
from minibroker.protocol.errors import ErrorCode
from minibroker.security.plain import PlainServer
from minibroker.security.sasl import (
    PLAIN,
    SaslAuthenticationFailed,
    SaslCredentialsRejected,
    SaslServer,
    rejected_credentials_message,
)
from minibroker.security.scram import SCRAM_MECHANISMS, ScramCredential, ScramServer
from minibroker.server.dispatch import dispatch

if TYPE_CHECKING:
    from minibroker.config import Listener
    from minibroker.server.broker import Broker
    from minibroker.server.context import Session
    from minibroker.server.security import ListenerSecurity

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake or versions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslAuthenticator:
    def __init__(self, broker: Broker, listener: Listener, security: ListenerSecurity) -> None:
        self._broker = broker
        self._listener = listener
        self._security = security
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self._raw_tokens = False
        self._server: SaslServer | None = None
        self.principal: str | None = None
        self.token_authenticated = False

    @property
    def complete(self) -> bool:
        return self.state is SaslState.COMPLETE

    @property
    def failed(self) -> bool:
        """The last answer ends the connection, after the failed-authentication delay."""
        return self.state is SaslState.FAILED

    async def receive(self, frame: bytes, session: Session) -> bytearray | EncodedFrame | None:
        """The answer to one frame before authentication is complete (the connection sends
        no more once it has failed); raises MalformedRequest to close without answering. Once
        authenticated, the session's principal is the authenticated user."""
        if self.state is SaslState.AUTHENTICATE:
            answer = self._raw_token(frame) if self._raw_tokens else self._authenticate(frame)
            if self.principal is not None:
                session.principal = self.principal
                session.token_authenticated = self.token_authenticated
            return answer
        return await self._handshake_phase(frame, session)

    def _fail(self, reason: str) -> MalformedRequest:
        self.state = SaslState.FAILED
        return MalformedRequest(reason)

    async def _handshake_phase(
        self, frame: bytes, session: Session
    ) -> bytearray | EncodedFrame | None:
        view = memoryview(frame)
        api_key, api_version, _ = peek_key_version_correlation(view)
        if api_key == ApiKey.ApiVersions:
            if self.state is not SaslState.HANDSHAKE_OR_VERSIONS:
                raise self._fail("Unexpected ApiVersions request during SASL authentication")
            if api_version <= self._broker.api_gates[ApiKey.ApiVersions].max_version:
                self.state = SaslState.HANDSHAKE
            return await dispatch(self._broker, frame, self._listener, session)
        if api_key != ApiKey.SaslHandshake:
            raise self._fail(
                f"Unexpected Kafka request of type {ApiKey.name_of(api_key)} during SASL handshake"
            )
        header, request = self._decode(view)
        mechanisms = list(self._security.sasl_mechanisms)
        if request.mechanism not in mechanisms:
            self.state = SaslState.FAILED
            log.info("SASL mechanism %r requested by client is not enabled", request.mechanism)
            error = ErrorCode.UNSUPPORTED_SASL_MECHANISM
        else:
            self._server = self._new_server(request.mechanism)
            self._raw_tokens = header.api_version == 0
            self.state = SaslState.AUTHENTICATE
            error = ErrorCode.NO_ERROR
        body = new_response(
            ApiKey.SaslHandshake, header.api_version, error_code=error, mechanisms=mechanisms
        )
        return encode_response(
            ApiKey.SaslHandshake, header.api_version, header.correlation_id, body
        )

    def _decode(self, view: memoryview) -> tuple[Any, Any]:
        api_key, api_version, _ = peek_key_version_correlation(view)
        if not REGISTRY[api_key].serves(api_version):
            raise self._fail(f"{ApiKey.name_of(api_key)} v{api_version} is not supported")
        header, body_pos = decode_header(view)
        return header, decode_body(api_key, api_version, view, body_pos)

    def _new_server(self, mechanism: str) -> SaslServer:
        if mechanism == PLAIN:
            return PlainServer(self._security.plain_users)
        return ScramServer(
            SCRAM_MECHANISMS[mechanism], self._broker.scram_credentials.get, self._token_login
        )

    def _token_login(self, token_id: str, mechanism: str) -> tuple[str, ScramCredential] | None:
        return self._broker.delegation_tokens.scram_login(token_id, mechanism)

    def _evaluate(self, token: bytes) -> bytes:
        """The mechanism's answer; raises SaslAuthenticationFailed with the client's message."""
        assert self._server is not None
        try:
            answer = self._server.evaluate(token)
        except SaslCredentialsRejected as exc:
            log.info("SASL %s authentication failed: %s", self._server.mechanism, exc)
            raise SaslAuthenticationFailed(
                rejected_credentials_message(self._server.mechanism)
            ) from exc
        if self._server.complete:
            self.principal = f"User:{self._server.authorization_id}"
            self.token_authenticated = (
                isinstance(self._server, ScramServer) and self._server.token_authenticated
            )
            self.state = SaslState.COMPLETE
        return answer

    def _raw_token(self, frame: bytes) -> bytearray | None:
        try:
            answer = self._evaluate(frame)
        except SaslAuthenticationFailed as exc:
            log.info("SASL authentication failed: %s", exc)
            self.state = SaslState.FAILED
            return None
        return bytearray(_SIZE.pack(len(answer)) + answer)

    def _authenticate(self, frame: bytes) -> bytearray:
        view = memoryview(frame)
        api_key, api_version, correlation_id = peek_key_version_correlation(view)
        if api_key != ApiKey.SaslAuthenticate:
            return self._illegal_state(api_key, api_version, correlation_id)
        header, request = self._decode(view)
        try:
            answer = self._evaluate(bytes(request.auth_bytes))
        except SaslAuthenticationFailed as exc:
            self.state = SaslState.FAILED
            body = new_response(
                ApiKey.SaslAuthenticate,
                api_version,
                error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                error_message=str(exc),
                auth_bytes=b"",
                session_lifetime_ms=0,
            )
        else:
            body = new_response(
                ApiKey.SaslAuthenticate,
                api_version,
                error_code=ErrorCode.NO_ERROR,
                error_message=None,
                auth_bytes=answer,
                session_lifetime_ms=0,
            )
        return encode_response(ApiKey.SaslAuthenticate, api_version, header.correlation_id, body)

    def _illegal_state(self, api_key: int, api_version: int, correlation_id: int) -> bytearray:
        reason = (
            f"Unexpected Kafka request of type {ApiKey.name_of(api_key)} during SASL authentication"
        )
        spec = REGISTRY.get(api_key)
        if spec is None or not spec.serves(api_version):
            raise self._fail(reason)
        error_field = response_class(api_key).fields.get("error_code")
        if error_field is None or not error_field.for_version_q(api_version):
            raise self._fail(reason)
        self.state = SaslState.FAILED
        body = new_response(api_key, api_version, error_code=ErrorCode.ILLEGAL_SASL_STATE)
        return encode_response(api_key, api_version, correlation_id, body)
