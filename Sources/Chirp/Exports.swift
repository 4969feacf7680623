// What users of Chirp need of the layers below, so that `import Chirp` stays their one import: the types that
// Chirp's public API names. Everything else of those targets stays theirs: ChirpDiscovery's browsers are a product of
// their own (`import ChirpDiscovery`), the wire's frames and the shared helpers are `package`.
@_exported import enum ChirpDiscovery.DiscoveryBackend
@_exported import enum ChirpDiscovery.NetworkInterface
@_exported import struct ChirpDiscovery.ServiceType
@_exported import struct ChirpSupport.ChirpError
@_exported import struct ChirpSupport.Peer
@_exported import struct ChirpTrust.Fingerprint
@_exported import struct ChirpTrust.FingerprintError
@_exported import enum ChirpTrust.Permission
@_exported import struct ChirpTrust.TrustEntry
@_exported import struct ChirpTrust.TrustStore
@_exported import protocol ChirpWire.ChirpMessage
@_exported import struct ChirpWire.JSONMessageCoder
@_exported import protocol ChirpWire.MessageCoder
