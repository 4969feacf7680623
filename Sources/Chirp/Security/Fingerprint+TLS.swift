import ChirpTrust
import NIOSSL

extension Fingerprint {
    /// The fingerprint of a certificate as TLS shows it: the SHA-256 of its SubjectPublicKeyInfo's DER bytes.
    init(of certificate: NIOSSLCertificate) throws {
        self.init(spki: try certificate.extractPublicKey().toSPKIBytes())
    }
}
