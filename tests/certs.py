"""Certificates for tests of TLS (the server's, Redis'), made with the `cryptography` package: no openssl, no
files in the repository."""
from __future__ import annotations

import datetime
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def issue(common_name: str, issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None = None, *,
          usage=None, names: tuple[x509.GeneralName, ...] = ()) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A certificate valid from an hour ago for a day: a CA when issuer is None, else a leaf signed by issuer, for
    `usage` (an extended key usage, or a tuple of them: a Redis Cluster node's serves and connects to the
    others)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_name, signing_key = (issuer[0].subject, issuer[1]) if issuer else (_name(common_name), key)
    builder = (x509.CertificateBuilder().subject_name(_name(common_name)).issuer_name(issuer_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True))
    if issuer is None:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False, encipher_only=False,
            decipher_only=False), critical=True)
    else:
        builder = builder.add_extension(x509.ExtendedKeyUsage(list(usage) if isinstance(usage, tuple) else [usage]),
                                        critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
    return builder.sign(signing_key, hashes.SHA256()), key


def write_pem(directory: Path, name: str, cert: x509.Certificate,
              key: ec.EllipticCurvePrivateKey | None = None) -> None:
    """NAME.pem, and NAME.key when a key is given, in directory."""
    (directory / f"{name}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        (directory / f"{name}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
