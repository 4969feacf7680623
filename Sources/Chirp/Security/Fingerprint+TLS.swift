import ChirpSupport
import ChirpTrust
import NIOSSL
import X509

extension Fingerprint {
    /// The fingerprint of a certificate as TLS shows it: the SHA-256 of its SubjectPublicKeyInfo's DER bytes.
    init(of certificate: NIOSSLCertificate) throws {
        self.init(spki: try certificate.extractPublicKey().toSPKIBytes())
    }
}

extension NIOSSLCertificate {
    /// The common name of the certificate's subject (a Chirp identity's name, `CN=laptop`), escaped and at most 64
    /// characters; nil when it has none or the certificate does not parse. Untrusted: whoever made the certificate
    /// chose it.
    var commonName: String? {
        guard let der = try? toDERBytes(), let certificate = try? Certificate(derEncoded: der) else { return nil }
        for relative in certificate.subject {
            for attribute in relative where attribute.type == .RDNAttributeType.commonName {
                let name = UntrustedText.escaped(String(describing: attribute.value))
                return name.isEmpty ? nil : String(name.prefix(64))
            }
        }
        return nil
    }
}
