//! The cluster's own certificate authority: generated on first start and kept (private, 0600) in a credentials
//! directory, or in memory for ephemeral test clusters. It signs the server's certificate (for `127.0.0.1`,
//! `::1` and `localhost`) and client certificates whose subject is the identity, as Kubernetes reads it: the
//! common name is the user, each organisation a group (Toolforge's issuer uses `O=toolforge, CN=<tool>`). The
//! owner's bearer token is kept beside it.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use ring::rand::{SecureRandom as _, SystemRandom};

use crate::private_files;

/// The file holding the CA's certificate and key (PEM, one after the other).
const CA_FILE: &str = "ca.pem";
/// The file holding the owner's bearer token.
const ADMIN_TOKEN_FILE: &str = "admin.token";
/// The CA's common name, as kubeadm names its own.
const CA_NAME: &str = "toolforge-local-ca";
/// How long the CA is valid, as kubeadm's.
const CA_YEARS: i64 = 10;
/// How long leaf certificates are valid; the server's and the admin's are issued anew at every start.
const LEAF_YEARS: i64 = 1;

/// Why credentials could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("cannot read or write `{}`", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{}` does not hold this cluster's CA certificate and key", .path.display())]
    Corrupt { path: PathBuf },
    #[error("cannot make a certificate")]
    Certificate(#[from] rcgen::Error),
    #[error("cannot set up TLS")]
    Tls(#[from] rustls::Error),
    #[error("cannot set up the client certificate check")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("the system's random number generator failed")]
    Random,
}

/// A client certificate and its key, PEM-encoded.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    pub certificate_pem: String,
    pub key_pem: String,
}

/// The CA and the owner's token.
pub struct Pki {
    ca_certificate_pem: String,
    ca: Issuer<'static, KeyPair>,
    admin_token: String,
}

impl std::fmt::Debug for Pki {
    /// Never prints the key or the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

impl Pki {
    /// A CA and token that live as long as this value (test clusters without a state file).
    pub fn ephemeral() -> Result<Pki, PkiError> {
        let (ca_certificate_pem, key) = new_ca()?;
        let ca = Issuer::from_ca_cert_pem(&ca_certificate_pem, key)?;
        Ok(Pki {
            ca_certificate_pem,
            ca,
            admin_token: random_token()?,
        })
    }

    /// The CA and token kept in `directory` (made 0700), created there on first use. Concurrent first uses
    /// agree: each file is published with a link that fails when another process published it first.
    pub fn load_or_create(directory: &Path) -> Result<Pki, PkiError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| PkiError::Io { path, source }
        };
        private_files::create_directory(directory).map_err(io_error(directory))?;
        let ca_path = directory.join(CA_FILE);
        let ca_text = read_or_publish(&ca_path, || {
            let (certificate, key) = new_ca()?;
            Ok(format!("{certificate}{}", key.serialize_pem()))
        })?;
        let token_path = directory.join(ADMIN_TOKEN_FILE);
        let admin_token = read_or_publish(&token_path, random_token)?;
        let corrupt = || PkiError::Corrupt {
            path: ca_path.clone(),
        };
        let (certificate, key) = split_certificate_and_key(&ca_text).ok_or_else(corrupt)?;
        let key = KeyPair::from_pem(key).map_err(|_| corrupt())?;
        let ca = Issuer::from_ca_cert_pem(certificate, key).map_err(|_| corrupt())?;
        Ok(Pki {
            ca_certificate_pem: certificate.to_owned(),
            ca,
            admin_token: admin_token.trim().to_owned(),
        })
    }

    /// The CA certificate clients trust (PEM).
    pub fn ca_certificate_pem(&self) -> &str {
        &self.ca_certificate_pem
    }

    /// The owner's bearer token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// A client certificate for `user` in `groups`.
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<ClientCredentials, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = leaf_params()?;
        let mut subject = DistinguishedName::new();
        for group in groups {
            subject.push(DnType::OrganizationName, *group);
        }
        subject.push(DnType::CommonName, user);
        params.distinguished_name = subject;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let certificate = params.signed_by(&key, &self.ca)?;
        Ok(ClientCredentials {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The server's certificate chain and key, for `127.0.0.1`, `::1` and `localhost`.
    pub(crate) fn issue_server(&self) -> Result<(Vec<u8>, Vec<u8>), PkiError> {
        let key = KeyPair::generate()?;
        let mut params = leaf_params()?;
        let mut subject = DistinguishedName::new();
        subject.push(DnType::CommonName, "toolforge-local-apiserver");
        params.distinguished_name = subject;
        params.subject_alt_names = vec![
            SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            SanType::IpAddress(IpAddr::V6(Ipv6Addr::LOCALHOST)),
            SanType::DnsName("localhost".try_into()?),
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let certificate = params.signed_by(&key, &self.ca)?;
        Ok((certificate.der().to_vec(), key.serialize_der()))
    }

    /// The CA certificate in DER, for the TLS client verifier.
    pub(crate) fn ca_certificate_der(&self) -> Result<Vec<u8>, PkiError> {
        let block = pem_block(&self.ca_certificate_pem).ok_or(PkiError::Corrupt {
            path: PathBuf::from(CA_FILE),
        })?;
        Ok(block)
    }
}

/// A new self-signed CA certificate (PEM) and its key.
fn new_ca() -> Result<(String, KeyPair), PkiError> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let mut subject = DistinguishedName::new();
    subject.push(DnType::CommonName, CA_NAME);
    params.distinguished_name = subject;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.serial_number = Some(random_serial()?);
    let (not_before, not_after) = validity(CA_YEARS);
    params.not_before = not_before;
    params.not_after = not_after;
    Ok((params.self_signed(&key)?.pem(), key))
}

fn leaf_params() -> Result<CertificateParams, PkiError> {
    let mut params = CertificateParams::default();
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.use_authority_key_identifier_extension = true;
    params.serial_number = Some(random_serial()?);
    let (not_before, not_after) = validity(LEAF_YEARS);
    params.not_before = not_before;
    params.not_after = not_after;
    Ok(params)
}

/// From a day ago (clients' clocks may lag) to `years` from now.
fn validity(years: i64) -> (time::OffsetDateTime, time::OffsetDateTime) {
    let now = time::OffsetDateTime::now_utc();
    (
        now - time::Duration::days(1),
        now + time::Duration::days(365 * years),
    )
}

fn random_bytes<const N: usize>() -> Result<[u8; N], PkiError> {
    let mut bytes = [0u8; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| PkiError::Random)?;
    Ok(bytes)
}

/// A positive 16-byte serial (RFC 5280 allows up to 20).
fn random_serial() -> Result<SerialNumber, PkiError> {
    let mut bytes = random_bytes::<16>()?;
    bytes[0] &= 0x7f;
    Ok(SerialNumber::from_slice(&bytes))
}

/// 256 random bits, hex-encoded.
fn random_token() -> Result<String, PkiError> {
    let bytes = random_bytes::<32>()?;
    Ok(bytes
        .iter()
        .fold(String::with_capacity(64), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        }))
}

/// The content of `path`, or what `make` produces, published there first if nobody else published it.
fn read_or_publish(
    path: &Path,
    make: impl FnOnce() -> Result<String, PkiError>,
) -> Result<String, PkiError> {
    let io_error = |source| PkiError::Io {
        path: path.to_owned(),
        source,
    };
    match fs::read_to_string(path) {
        Ok(text) => return Ok(text),
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(io_error(error)),
        Err(_) => {}
    }
    let text = make()?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    private_files::write(&temporary, &text).map_err(io_error)?;
    // A hard link never replaces an existing file: whoever links first wins, the others read the winner's.
    let linked = fs::hard_link(&temporary, path);
    let _ = fs::remove_file(&temporary);
    match linked {
        Ok(()) => Ok(text),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
            fs::read_to_string(path).map_err(io_error)
        }
        Err(error) => Err(io_error(error)),
    }
}

/// Splits `ca.pem` into its certificate block and its key block.
fn split_certificate_and_key(text: &str) -> Option<(&str, &str)> {
    const END: &str = "-----END CERTIFICATE-----";
    let end = text.find(END)? + END.len();
    let (certificate, key) = text.split_at(end);
    let key = key.trim_start();
    key.starts_with("-----BEGIN").then_some((certificate, key))
}

/// The DER bytes of the first PEM block.
fn pem_block(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let body: String = text
        .lines()
        .skip_while(|line| !line.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|line| !line.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    #[test]
    fn the_ca_is_kept_private_and_reused() {
        let root = tempfile::tempdir().expect("temp dir");
        let directory = root.path().join("pki");
        let first = Pki::load_or_create(&directory).expect("created");
        let second = Pki::load_or_create(&directory).expect("loaded");
        assert_eq!(first.ca_certificate_pem(), second.ca_certificate_pem());
        assert_eq!(first.admin_token(), second.admin_token());
        assert_eq!(first.admin_token().len(), 64);
        let mode = |path: &Path| fs::metadata(path).expect("exists").permissions().mode() & 0o777;
        assert_eq!(mode(&directory), 0o700);
        assert_eq!(mode(&directory.join(CA_FILE)), 0o600);
        assert_eq!(mode(&directory.join(ADMIN_TOKEN_FILE)), 0o600);
        let leftovers: Vec<_> = fs::read_dir(&directory)
            .expect("listed")
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_damaged_ca_file_is_reported() {
        let root = tempfile::tempdir().expect("temp dir");
        private_files::write(&root.path().join(CA_FILE), "not a pem").expect("written");
        let error = Pki::load_or_create(root.path()).expect_err("corrupt");
        assert!(matches!(error, PkiError::Corrupt { .. }), "{error}");
    }

    #[test]
    fn client_certificates_carry_user_and_groups() {
        let pki = Pki::ephemeral().expect("pki");
        let credentials = pki.issue_client("alice", &["toolforge"]).expect("issued");
        let der = pem_block(&credentials.certificate_pem).expect("pem");
        let (_, certificate) = x509_parser::parse_x509_certificate(&der).expect("x509");
        let subject = certificate.subject().to_string();
        assert!(subject.contains("CN=alice"), "{subject}");
        assert!(subject.contains("O=toolforge"), "{subject}");
    }
}
