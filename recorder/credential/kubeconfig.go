package credential

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// kubeconfig is the part of a kubeconfig file that holds credentials.
type kubeconfig struct {
	Users []struct {
		Name string `json:"name"`
		User struct {
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         string `json:"client-key-data"`
			Token                 string `json:"token"`
			TokenFile             string `json:"tokenFile"`
			Password              string `json:"password"`
		} `json:"user"`
	} `json:"users"`
}

// AddKubeconfig adds the credentials of every user in the kubeconfig files
// (a KUBECONFIG list): client key and certificate, inline or in the files
// they name, tokens and passwords. A file that cannot be read is an error:
// the recorder cannot promise to keep back what it does not know.
func (s *Set) AddKubeconfig(list string) error {
	for _, file := range filepath.SplitList(list) {
		if file == "" {
			continue
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("credential: read the kubeconfig %s to keep its credentials out of the recording: %w", file, err)
		}
		var kc kubeconfig
		if err := yaml.Unmarshal(raw, &kc); err != nil {
			return fmt.Errorf("credential: the kubeconfig %s does not parse: %w", file, err)
		}
		dir := filepath.Dir(file)
		for _, u := range kc.Users {
			what := func(part string) string {
				return fmt.Sprintf("the %s of user %q in the kubeconfig %s", part, u.Name, file)
			}
			for _, d := range []struct{ data, path, part string }{
				{u.User.ClientKeyData, u.User.ClientKey, "client key"},
				{u.User.ClientCertificateData, u.User.ClientCertificate, "client certificate"},
				{"", u.User.TokenFile, "token"},
			} {
				if d.data != "" {
					v, err := base64.StdEncoding.DecodeString(d.data)
					if err != nil {
						return fmt.Errorf("credential: the %s in %s is not base64: %w", what(d.part), file, err)
					}
					s.AddValue(v, what(d.part))
				}
				if d.path != "" {
					p := d.path
					if !filepath.IsAbs(p) {
						p = filepath.Join(dir, p)
					}
					v, err := os.ReadFile(p)
					if err != nil {
						return fmt.Errorf("credential: read %s: %w", what(d.part), err)
					}
					s.AddValue(v, what(d.part))
				}
			}
			s.Add([]byte(u.User.Token), what("token"))
			s.Add([]byte(u.User.Password), what("password"))
		}
	}
	return nil
}
